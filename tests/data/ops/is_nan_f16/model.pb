
2
xPlaceholder*
dtype0*
shape
:

yIsNanx*
T0"ª