
2
xPlaceholder*
dtype0*
shape
:

yAsinx*
T0"ª