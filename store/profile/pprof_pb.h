/*
 * pprof_pb.h - short names for protobuf-c's generated Profile messages
 * (gen/profile.pb-c.h), shared by pprof_decode.c and pprof_encode.c.
 */
#ifndef PROFFS_PPROF_PB_H
#define PROFFS_PPROF_PB_H

#include "gen/profile.pb-c.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

#endif
