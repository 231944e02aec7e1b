
2
xPlaceholder*
dtype0*
shape
:

yCosx*
T0"ª