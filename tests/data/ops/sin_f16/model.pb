
2
xPlaceholder*
dtype0*
shape
:

ySinx*
T0"ª