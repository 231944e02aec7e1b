
2
xPlaceholder*
dtype0*
shape
:

yExpx*
T0"Ú