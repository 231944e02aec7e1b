
2
xPlaceholder*
dtype0*
shape
:

yRsqrtx*
T0"Ú