
2
xPlaceholder*
dtype0
*
shape
:

yWherex*
T0
"Ú