
;
xPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ

yRelux*
T0"Ú