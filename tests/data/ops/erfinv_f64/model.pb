
2
xPlaceholder*
dtype0*
shape
:

yErfinvx*
T0"ª