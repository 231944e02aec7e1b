
2
xPlaceholder*
dtype0	*
shape
:
.
yPlaceholder*
dtype0	*
shape:

zSubxy*
T0	"Ú