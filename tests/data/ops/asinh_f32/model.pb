
2
xPlaceholder*
dtype0*
shape
:

yAsinhx*
T0"ª