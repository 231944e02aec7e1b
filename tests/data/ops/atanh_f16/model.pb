
2
xPlaceholder*
dtype0*
shape
:

yAtanhx*
T0"ª