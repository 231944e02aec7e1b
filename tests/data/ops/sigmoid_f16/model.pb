
2
xPlaceholder*
dtype0*
shape
:

ySigmoidx*
T0"Ú