
6
xPlaceholder*
dtype0
*
shape:
.
yPlaceholder*
dtype0
*
shape:

z	LogicalOrxy"Ú