
2
xPlaceholder*
dtype0*
shape
:

ySoftplusx*
T0"Ú