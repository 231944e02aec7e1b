
R
xPlaceholder*
_user_specified_namex*
dtype0*
shape:€€€

SoftmaxSoftmaxx*
T0

yIdentitySoftmax*
T0
 
IdentityIdentityy*
T0"ª