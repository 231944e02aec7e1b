
2
xPlaceholder*
dtype0*
shape
:

yLog1px*
T0"Ú