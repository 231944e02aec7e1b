
;
xPlaceholder*
dtype0*
shape:ÿÿÿÿÿÿÿÿÿ

yIdentityx*
T0"Ú