
2
xPlaceholder*
dtype0*
shape
:

y
Reciprocalx*
T0"Ú