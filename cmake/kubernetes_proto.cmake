# The protobuf schema of the built-in kinds (src/kube/protobuf.h), for the main build and the fuzzers':
# the pinned upstream generated.proto files (third_party/kubernetes-proto, hack/update-kubernetes-proto.sh)
# compiled by protoc into a descriptor set (about 80 KB), and the two lists of where the JSON differs
# from the protobuf (the fields Go inlines in their parent, and those the JSON omits when zero), each
# embedded in a generated source. No C++ is generated from the .proto files: the decoder walks the wire
# with the descriptors, so the build compiles three arrays instead of ~200k lines.
#
#   myop_kubernetes_proto_sources(OUT)   sets OUT to the generated sources (needs protobuf::protoc)
function(myop_kubernetes_proto_sources out)
  set(root ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../third_party/kubernetes-proto)
  set(embed ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/embed_file.cmake)
  set(generated ${CMAKE_BINARY_DIR}/generated)
  set(protos k8s.io/api/core/v1/generated.proto k8s.io/api/apps/v1/generated.proto
             k8s.io/api/coordination/v1/generated.proto k8s.io/api/events/v1/generated.proto)
  file(GLOB_RECURSE proto_files CONFIGURE_DEPENDS ${root}/*.proto)
  set(descriptor_set ${generated}/kubernetes.desc)
  add_custom_command(
    OUTPUT ${descriptor_set}
    COMMAND protobuf::protoc --include_imports --descriptor_set_out=${descriptor_set} -I ${root} ${protos}
    DEPENDS ${proto_files}
    COMMENT "protoc: the Kubernetes descriptor set"
    VERBATIM)
  set(sources)
  foreach(name descriptor_set inline_fields omit_empty_fields)
    if(name STREQUAL "descriptor_set")
      set(input ${descriptor_set})
    else()
      string(REPLACE "_" "-" file ${name})
      set(input ${root}/${file}.txt)
    endif()
    set(source ${generated}/kubernetes_${name}.cpp)
    add_custom_command(
      OUTPUT ${source}
      COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${source} -DSYMBOL=myop_kubernetes_${name} -P ${embed}
      DEPENDS ${input} ${embed}
      VERBATIM)
    list(APPEND sources ${source})
  endforeach()
  set(${out} ${sources} PARENT_SCOPE)
endfunction()
