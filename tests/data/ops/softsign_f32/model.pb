
2
xPlaceholder*
dtype0*
shape
:

ySoftsignx*
T0"Ú