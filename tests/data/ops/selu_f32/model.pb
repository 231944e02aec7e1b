
2
xPlaceholder*
dtype0*
shape
:

ySelux*
T0"Ú