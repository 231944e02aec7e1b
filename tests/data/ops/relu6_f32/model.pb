
2
xPlaceholder*
dtype0*
shape
:

yRelu6x*
T0"Ú