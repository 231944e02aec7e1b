
2
xPlaceholder*
dtype0*
shape
:
*
y	LeakyRelux*
T0*
alpha%š™™>"Ú