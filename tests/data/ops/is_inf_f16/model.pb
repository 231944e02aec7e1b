
2
xPlaceholder*
dtype0*
shape
:

yIsInfx*
T0"ª