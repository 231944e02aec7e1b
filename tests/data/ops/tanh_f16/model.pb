
2
xPlaceholder*
dtype0*
shape
:

yTanhx*
T0"Ú