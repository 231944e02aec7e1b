
2
xPlaceholder*
dtype0*
shape
:

yAtanx*
T0"ª