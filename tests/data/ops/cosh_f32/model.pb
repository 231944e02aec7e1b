
2
xPlaceholder*
dtype0*
shape
:

yCoshx*
T0"ª