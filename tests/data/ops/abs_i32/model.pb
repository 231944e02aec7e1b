
2
xPlaceholder*
dtype0*
shape
:

yAbsx*
T0"Ú