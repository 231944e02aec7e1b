
2
xPlaceholder*
dtype0*
shape
:

yAcoshx*
T0"ª