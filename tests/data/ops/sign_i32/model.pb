
2
xPlaceholder*
dtype0*
shape
:

ySignx*
T0"Ú