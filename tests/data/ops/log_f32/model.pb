
2
xPlaceholder*
dtype0*
shape
:

yLogx*
T0"Ú