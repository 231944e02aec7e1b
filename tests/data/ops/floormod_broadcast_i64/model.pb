
6
xPlaceholder*
dtype0	*
shape:
.
yPlaceholder*
dtype0	*
shape:

zFloorModxy*
T0	"Ú