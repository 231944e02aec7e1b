
6
xPlaceholder*
dtype0*
shape:
2
axesConst*
dtype0*
valueB:
7
yMinxaxes*

Tidx0*
T0*
	keep_dims("Ú