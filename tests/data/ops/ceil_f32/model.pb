
2
xPlaceholder*
dtype0*
shape
:

yCeilx*
T0"Ú