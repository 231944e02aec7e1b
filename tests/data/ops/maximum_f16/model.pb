
2
xPlaceholder*
dtype0*
shape
:
.
yPlaceholder*
dtype0*
shape:

zMaximumxy*
T0"Ú