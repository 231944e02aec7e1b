
2
xPlaceholder*
dtype0*
shape
:

ySquarex*
T0"Ú