
6
xPlaceholder*
dtype0*
shape:
;
axesConst*
dtype0*
valueB:
ÿÿÿÿÿÿÿÿÿ
7
ySumxaxes*

Tidx0*
T0*
	keep_dims("Ú