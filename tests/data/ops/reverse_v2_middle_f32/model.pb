
6
xPlaceholder*
dtype0*
shape:
2
axisConst*
dtype0*
valueB:
,
y	ReverseV2xaxis*

Tidx0*
T0"ª