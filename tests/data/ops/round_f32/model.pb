
2
xPlaceholder*
dtype0*
shape
:

yRoundx*
T0"Ú