
2
xPlaceholder*
dtype0*
shape
:

yFloorx*
T0"Ú