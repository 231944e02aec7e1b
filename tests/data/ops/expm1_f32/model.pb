
2
xPlaceholder*
dtype0*
shape
:

yExpm1x*
T0"ª