
2
xPlaceholder*
dtype0*
shape
:

yErfx*
T0"Ú