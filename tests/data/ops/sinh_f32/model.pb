
2
xPlaceholder*
dtype0*
shape
:

ySinhx*
T0"ª