#include <catch2/catch.hpp>

#include "runtime/controller/event_handler.h"
#include "runtime/controller/predicate.h"
#include "support/object_builder.h"

using namespace myop::runtime;
using myop::runtime::testing::make_named;
using myop::runtime::testing::make_owned;

TEST_CASE("generation_changed drops status-only updates and keeps the rest", "[runtime][predicate]") {
  ObjectEvent update{EventType::updated, make_named("a", "x", 2, "11"), make_named("a", "x", 2, "10")};
  CHECK_FALSE(generation_changed(update));
  update.object = make_named("a", "x", 3, "12");
  CHECK(generation_changed(update));
  CHECK(generation_changed(ObjectEvent{EventType::deleted, make_named("a", "x")}));
  CHECK(generation_changed(ObjectEvent{EventType::added, make_named("a", "x")}));
}

TEST_CASE("label, annotation and resourceVersion predicates", "[runtime][predicate]") {
  auto plain = make_named("a", "x", 1, "1");
  auto labelled = make_named("a", "x", 1, "2", R"(,"labels":{"k":"v"})");
  auto annotated = make_named("a", "x", 1, "3", R"(,"annotations":{"k":"v"})");
  CHECK(labels_changed({EventType::updated, labelled, plain}));
  CHECK_FALSE(labels_changed({EventType::updated, annotated, plain}));
  CHECK(annotations_changed({EventType::updated, annotated, plain}));
  CHECK_FALSE(annotations_changed({EventType::updated, labelled, plain}));
  CHECK_FALSE(resource_version_changed({EventType::updated, plain, plain}));
  CHECK(resource_version_changed({EventType::updated, labelled, plain}));
  CHECK_FALSE(not_resync({EventType::resync, plain}));
  CHECK(any_of({generation_changed, labels_changed})({EventType::updated, labelled, plain}));
  CHECK_FALSE(all_of({generation_changed, labels_changed})({EventType::updated, labelled, plain}));
}

TEST_CASE("primary events map to the object at the priorities of docs/design.md",
          "[runtime][event_handler]") {
  auto mapper = enqueue_object();
  auto object = make_named("tenant", "x");
  CHECK(mapper({EventType::updated, object, object}) ==
        std::vector<EnqueueRequest>{{{"tenant", "x"}, Priority::high}});
  CHECK(mapper({EventType::deleted, object}) ==
        std::vector<EnqueueRequest>{{{"tenant", "x"}, Priority::high}});
  ObjectEvent initial{EventType::added, object};
  initial.initial_list = true;
  CHECK(mapper(initial) == std::vector<EnqueueRequest>{{{"tenant", "x"}, Priority::low}});
  CHECK(mapper({EventType::resync, object}) == std::vector<EnqueueRequest>{{{"tenant", "x"}, Priority::low}});
}

TEST_CASE("owned events map to the controller owner", "[runtime][event_handler]") {
  auto mapper = enqueue_controller_owner("myorg.io", "MyResource");
  auto child = make_owned("tenant", "x-deploy", "myorg.io/v1alpha1", "MyResource", "x");
  CHECK(mapper({EventType::updated, child, child}) ==
        std::vector<EnqueueRequest>{{{"tenant", "x"}, Priority::normal}});
  CHECK(mapper({EventType::deleted, child}) ==
        std::vector<EnqueueRequest>{{{"tenant", "x"}, Priority::high}});
  // Other owner kinds, other groups and non-controller owners are ignored.
  CHECK(mapper({EventType::updated, make_owned("t", "d", "apps/v1", "ReplicaSet", "x")}).empty());
  CHECK(mapper({EventType::updated, make_owned("t", "d", "other.io/v1", "MyResource", "x")}).empty());
  CHECK(mapper({EventType::updated, make_owned("t", "d", "myorg.io/v1alpha1", "MyResource", "x", false)})
            .empty());
  // A child handed to another owner notifies both.
  auto moved = make_owned("tenant", "x-deploy", "myorg.io/v1alpha1", "MyResource", "y");
  CHECK(
      mapper({EventType::updated, moved, child}) ==
      std::vector<EnqueueRequest>{{{"tenant", "y"}, Priority::normal}, {{"tenant", "x"}, Priority::normal}});
}

TEST_CASE("mapped events use the given priority except in the background", "[runtime][event_handler]") {
  auto mapper = enqueue_mapped(
      [](const ObjectEvent&) {
        return std::vector<ObjectKey>{{"a", "1"}, {"b", "2"}};
      },
      Priority::high);
  auto object = make_named("config", "flags");
  CHECK(mapper({EventType::updated, object, object}) ==
        std::vector<EnqueueRequest>{{{"a", "1"}, Priority::high}, {{"b", "2"}, Priority::high}});
  CHECK(mapper({EventType::resync, object})[0].priority == Priority::low);
}
