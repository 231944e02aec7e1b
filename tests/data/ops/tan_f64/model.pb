
2
xPlaceholder*
dtype0*
shape
:

yTanx*
T0"ª