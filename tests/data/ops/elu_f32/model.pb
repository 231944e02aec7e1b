
2
xPlaceholder*
dtype0*
shape
:

yElux*
T0"Ú