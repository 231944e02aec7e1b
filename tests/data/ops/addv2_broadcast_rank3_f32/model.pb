
.
xPlaceholder*
dtype0*
shape:
6
yPlaceholder*
dtype0*
shape:

zAddV2xy*
T0"Ú