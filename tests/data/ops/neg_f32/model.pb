
2
xPlaceholder*
dtype0*
shape
:

yNegx*
T0"Ú