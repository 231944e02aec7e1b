
5
condPlaceholder*
dtype0
*
shape
:
2
xPlaceholder*
dtype0	*
shape
:
.
yPlaceholder*
dtype0	*
shape:
"
zSelectV2condxy*
T0	"Ú