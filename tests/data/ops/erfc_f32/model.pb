
2
xPlaceholder*
dtype0*
shape
:

yErfcx*
T0"Ú