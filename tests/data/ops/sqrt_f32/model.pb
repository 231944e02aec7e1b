
2
xPlaceholder*
dtype0*
shape
:

ySqrtx*
T0"Ú