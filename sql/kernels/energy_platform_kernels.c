/*
 * The platform's array kernels: a local day's quarter hours out of two UTC days' arrays, and sums
 * over a run of subscripts of float8 arrays, which SQL can only write as one executor row per
 * element (about 0.15 us each; what-if's year of quarter hours is 35,040 of them a stream) or
 * as two array copies (about 5 us a day). They compute nothing SQL does not: each is
 * defined by its reference in sql/functions/10_core_kernels.sql, whose result it equals to the
 * bit (the same additions, in the same order; where the reference raises an overflow or
 * underflow error, this gives the infinity or zero instead), and which stands in where this
 * library is not installed.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

PG_MODULE_MAGIC;

/* A float8 array's elements by subscript; with nulls, the bitmap says which are stored. */
typedef struct
{
	const double *data;
	const bits8 *nulls;
	int			lower;
	int			upper;
} Vec;

static Vec
vec_of(ArrayType *array)
{
	Vec			v;

	if (ARR_ELEMTYPE(array) != FLOAT8OID || ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a one-dimensional double precision array is needed")));
	v.data = (const double *) ARR_DATA_PTR(array);
	v.nulls = ARR_NULLBITMAP(array);
	v.lower = ARR_NDIM(array) == 1 ? ARR_LBOUND(array)[0] : 1;
	v.upper = ARR_NDIM(array) == 1 ? v.lower + ARR_DIMS(array)[0] - 1 : 0;
	return v;
}

static bool
vec_has(const Vec *v, int subscript)
{
	int			i = subscript - v->lower;

	return v->nulls == NULL || (v->nulls[i / 8] & (1 << (i % 8))) != 0;
}

/* Where subscript's element is stored, counting the stored ones before it. */
static int
vec_offset(const Vec *v, int subscript)
{
	int			offset = 0;

	if (v->nulls == NULL)
		return subscript - v->lower;
	for (int n = v->lower; n < subscript; n++)
		offset += vec_has(v, n);
	return offset;
}

/*
 * The sum over subscripts lo..hi, in order, of a[n] (b NULL) or a[n] * b[n], leaving out every
 * n where an element is null or missing; false when none is left (SQL's sum of no rows).
 */
static bool
slice_sum(const Vec *a, const Vec *b, int32 lo, int32 hi, double *sum)
{
	int			first = Max(lo, a->lower);
	int			last = Min(hi, a->upper);
	int			at,
				bt = 0;
	bool		any = false;

	if (b != NULL)
	{
		first = Max(first, b->lower);
		last = Min(last, b->upper);
	}
	*sum = 0;
	if (first > last)
		return false;
	at = vec_offset(a, first);
	if (b != NULL)
		bt = vec_offset(b, first);
	for (int n = first; n <= last; n++)
	{
		bool		has_a = vec_has(a, n);
		bool		has_b = b == NULL || vec_has(b, n);

		if (has_a && has_b)
		{
			double		term = b == NULL ? a->data[at] : a->data[at] * b->data[bt];

			/* As sum() does: the first term is the sum (-0 stays -0), then each is added. */
			*sum = any ? *sum + term : term;
			any = true;
		}
		at += has_a;
		bt += b != NULL && has_b;
	}
	return any;
}

PG_FUNCTION_INFO_V1(ep_slice_sum);

/* cluster.slice_sum(a float8[], lo int, hi int): sum of a[lo..hi], null when none. */
Datum
ep_slice_sum(PG_FUNCTION_ARGS)
{
	Vec			a = vec_of(PG_GETARG_ARRAYTYPE_P(0));
	double		sum;

	if (!slice_sum(&a, NULL, PG_GETARG_INT32(1), PG_GETARG_INT32(2), &sum))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(sum);
}

PG_FUNCTION_INFO_V1(ep_slice_dot);

/* cluster.slice_dot(a float8[], b float8[], lo int, hi int): sum of a[n] * b[n], n in lo..hi. */
Datum
ep_slice_dot(PG_FUNCTION_ARGS)
{
	Vec			a = vec_of(PG_GETARG_ARRAYTYPE_P(0));
	Vec			b = vec_of(PG_GETARG_ARRAYTYPE_P(1));
	double		sum;

	if (!slice_sum(&a, &b, PG_GETARG_INT32(2), PG_GETARG_INT32(3), &sum))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(sum);
}

#define UTC_DAY_QUARTERS 96

PG_FUNCTION_INFO_V1(ep_day_quarters);

/*
 * cluster.day_quarters(day float8[], next float8[], first int, count int): elements first ..
 * first + count - 1 of day || next, a null array standing for 96 nulls; as the reference's
 * concatenation and slice do, subscripts count from day's lower bound (next's where day is
 * empty), a run is cut to the elements there are, and the answer's lower bound is 1.
 */
Datum
ep_day_quarters(PG_FUNCTION_ARGS)
{
	Vec			parts[2];
	bool		missing[2];
	int			lower,
				upper,
				first,
				last,
				offsets[2] = {0, 0};
	Datum	   *elements;
	bool	   *nulls;
	int			count,
				one = 1;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
		PG_RETURN_NULL();
	for (int i = 0; i < 2; i++)
	{
		missing[i] = PG_ARGISNULL(i);
		if (missing[i])
		{
			parts[i].data = NULL;
			parts[i].nulls = NULL;
			parts[i].lower = 1;
			parts[i].upper = UTC_DAY_QUARTERS;
		}
		else
			parts[i] = vec_of(PG_GETARG_ARRAYTYPE_P(i));
	}
	/* The concatenation's bounds: day's lower bound, or next's alone where day is empty. */
	if (parts[0].upper < parts[0].lower)
	{
		lower = parts[1].lower;
		upper = parts[1].upper;
	}
	else
	{
		lower = parts[0].lower;
		upper = parts[0].upper + Max(parts[1].upper - parts[1].lower + 1, 0);
	}
	/* The reference's first + count - 1, with its error where that leaves the integers */
	if (pg_add_s32_overflow(PG_GETARG_INT32(2), PG_GETARG_INT32(3), &last) ||
		pg_sub_s32_overflow(last, 1, &last))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("integer out of range")));
	first = Max(PG_GETARG_INT32(2), lower);
	last = Min(last, upper);
	if (first > last)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(FLOAT8OID));

	count = last - first + 1;
	elements = palloc(sizeof(Datum) * count);
	nulls = palloc(sizeof(bool) * count);
	for (int n = lower, k = 0; n <= last; n++)
	{
		/* the part and subscript in it of the concatenation's element n */
		int			in_day = parts[0].upper - parts[0].lower + 1;
		int			which = n - lower < in_day ? 0 : 1;
		int			subscript = parts[which].lower + (which == 0 ? n - lower : n - lower - in_day);
		const Vec  *part = &parts[which];
		bool		has = !missing[which] && vec_has(part, subscript);

		if (n >= first)
		{
			nulls[k] = !has;
			elements[k] = has ? Float8GetDatum(part->data[offsets[which]]) : (Datum) 0;
			k++;
		}
		offsets[which] += has;
	}
	get_typlenbyvalalign(FLOAT8OID, &typlen, &typbyval, &typalign);
	PG_RETURN_ARRAYTYPE_P(construct_md_array(elements, nulls, 1, &count, &one, FLOAT8OID,
											 typlen, typbyval, typalign));
}
