
2
xPlaceholder*
dtype0*
shape
:
2
yPlaceholder*
dtype0*
shape
:
<
zNotEqualxy*
T0*
incompatible_shape_error("Ú