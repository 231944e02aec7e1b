
2
xPlaceholder*
dtype0
*
shape
:

y
LogicalNotx"Ú