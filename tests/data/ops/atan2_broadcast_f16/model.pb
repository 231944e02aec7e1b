
2
xPlaceholder*
dtype0*
shape
:
.
yPlaceholder*
dtype0*
shape:

zAtan2xy*
T0"ª