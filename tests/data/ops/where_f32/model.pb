
?
xPlaceholder*
dtype0* 
shape:ÿÿÿÿÿÿÿÿÿ

yWherex*
T0"Ú