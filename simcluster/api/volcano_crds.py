"""Volcano's CustomResourceDefinition schemas for Queue and PodGroup (v1beta1), which the
simulated cluster validates them with (``structural``): the ``openAPIV3Schema`` of
config/crd/volcano/bases/scheduling.volcano.sh_{queues,podgroups}.yaml at Volcano commit
ed72c7c815a9fd547a787134676f73d42e9d049c, every ``description`` left out. Generated, not
edited: regenerate from those files (yaml.safe_load, drop the descriptions, json.dumps).
"""

from __future__ import annotations

import json

SCHEMAS: dict[str, dict] = json.loads(r"""
{
 "queues": {
  "properties": {
   "apiVersion": {
    "type": "string"
   },
   "kind": {
    "type": "string"
   },
   "metadata": {
    "type": "object"
   },
   "spec": {
    "properties": {
     "affinity": {
      "properties": {
       "nodeGroupAffinity": {
        "properties": {
         "preferredDuringSchedulingIgnoredDuringExecution": {
          "items": {
           "type": "string"
          },
          "type": "array"
         },
         "requiredDuringSchedulingIgnoredDuringExecution": {
          "items": {
           "type": "string"
          },
          "type": "array"
         }
        },
        "type": "object"
       },
       "nodeGroupAntiAffinity": {
        "properties": {
         "preferredDuringSchedulingIgnoredDuringExecution": {
          "items": {
           "type": "string"
          },
          "type": "array"
         },
         "requiredDuringSchedulingIgnoredDuringExecution": {
          "items": {
           "type": "string"
          },
          "type": "array"
         }
        },
        "type": "object"
       }
      },
      "type": "object"
     },
     "capability": {
      "additionalProperties": {
       "anyOf": [
        {
         "type": "integer"
        },
        {
         "type": "string"
        }
       ],
       "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
       "x-kubernetes-int-or-string": true
      },
      "type": "object"
     },
     "dequeueStrategy": {
      "default": "traverse",
      "enum": [
       "fifo",
       "traverse"
      ],
      "type": "string"
     },
     "deserved": {
      "additionalProperties": {
       "anyOf": [
        {
         "type": "integer"
        },
        {
         "type": "string"
        }
       ],
       "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
       "x-kubernetes-int-or-string": true
      },
      "type": "object"
     },
     "extendClusters": {
      "items": {
       "properties": {
        "capacity": {
         "additionalProperties": {
          "anyOf": [
           {
            "type": "integer"
           },
           {
            "type": "string"
           }
          ],
          "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
          "x-kubernetes-int-or-string": true
         },
         "type": "object"
        },
        "name": {
         "type": "string"
        },
        "weight": {
         "format": "int32",
         "type": "integer"
        }
       },
       "type": "object"
      },
      "type": "array"
     },
     "guarantee": {
      "properties": {
       "resource": {
        "additionalProperties": {
         "anyOf": [
          {
           "type": "integer"
          },
          {
           "type": "string"
          }
         ],
         "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
         "x-kubernetes-int-or-string": true
        },
        "type": "object"
       }
      },
      "type": "object"
     },
     "parent": {
      "maxLength": 253,
      "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
      "type": "string"
     },
     "priority": {
      "format": "int32",
      "minimum": 0,
      "type": "integer"
     },
     "reclaimable": {
      "type": "boolean"
     },
     "type": {
      "maxLength": 253,
      "type": "string"
     },
     "weight": {
      "default": 1,
      "format": "int32",
      "maximum": 65535,
      "minimum": 1,
      "type": "integer"
     }
    },
    "type": "object"
   },
   "status": {
    "properties": {
     "allocated": {
      "additionalProperties": {
       "anyOf": [
        {
         "type": "integer"
        },
        {
         "type": "string"
        }
       ],
       "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
       "x-kubernetes-int-or-string": true
      },
      "type": "object"
     },
     "completed": {
      "format": "int32",
      "minimum": 0,
      "type": "integer"
     },
     "inqueue": {
      "format": "int32",
      "minimum": 0,
      "type": "integer"
     },
     "pending": {
      "format": "int32",
      "minimum": 0,
      "type": "integer"
     },
     "reservation": {
      "properties": {
       "nodes": {
        "items": {
         "type": "string"
        },
        "type": "array"
       },
       "resource": {
        "additionalProperties": {
         "anyOf": [
          {
           "type": "integer"
          },
          {
           "type": "string"
          }
         ],
         "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
         "x-kubernetes-int-or-string": true
        },
        "type": "object"
       }
      },
      "type": "object"
     },
     "running": {
      "format": "int32",
      "minimum": 0,
      "type": "integer"
     },
     "state": {
      "enum": [
       "Open",
       "Closed",
       "Closing",
       "Unknown"
      ],
      "type": "string"
     },
     "unknown": {
      "format": "int32",
      "minimum": 0,
      "type": "integer"
     }
    },
    "type": "object"
   }
  },
  "type": "object"
 },
 "podgroups": {
  "properties": {
   "apiVersion": {
    "type": "string"
   },
   "kind": {
    "type": "string"
   },
   "metadata": {
    "type": "object"
   },
   "spec": {
    "properties": {
     "minMember": {
      "format": "int32",
      "minimum": 0,
      "type": "integer"
     },
     "minResources": {
      "additionalProperties": {
       "anyOf": [
        {
         "type": "integer"
        },
        {
         "type": "string"
        }
       ],
       "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
       "x-kubernetes-int-or-string": true
      },
      "type": "object"
     },
     "minTaskMember": {
      "additionalProperties": {
       "format": "int32",
       "type": "integer"
      },
      "type": "object"
     },
     "networkTopology": {
      "properties": {
       "highestTierAllowed": {
        "minimum": 0,
        "type": "integer"
       },
       "highestTierName": {
        "maxLength": 253,
        "type": "string"
       },
       "mode": {
        "default": "hard",
        "enum": [
         "hard",
         "soft"
        ],
        "type": "string"
       }
      },
      "type": "object"
     },
     "priorityClassName": {
      "maxLength": 253,
      "type": "string"
     },
     "queue": {
      "default": "default",
      "maxLength": 253,
      "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
      "type": "string"
     },
     "subGroupPolicy": {
      "items": {
       "properties": {
        "labelSelector": {
         "properties": {
          "matchExpressions": {
           "items": {
            "properties": {
             "key": {
              "type": "string"
             },
             "operator": {
              "type": "string"
             },
             "values": {
              "items": {
               "type": "string"
              },
              "type": "array",
              "x-kubernetes-list-type": "atomic"
             }
            },
            "required": [
             "key",
             "operator"
            ],
            "type": "object"
           },
           "type": "array",
           "x-kubernetes-list-type": "atomic"
          },
          "matchLabels": {
           "additionalProperties": {
            "type": "string"
           },
           "type": "object"
          }
         },
         "type": "object",
         "x-kubernetes-map-type": "atomic"
        },
        "matchLabelKeys": {
         "items": {
          "type": "string"
         },
         "type": "array",
         "x-kubernetes-list-type": "atomic"
        },
        "minSubGroups": {
         "default": 0,
         "format": "int32",
         "minimum": 0,
         "type": "integer"
        },
        "name": {
         "maxLength": 253,
         "type": "string"
        },
        "networkTopology": {
         "properties": {
          "highestTierAllowed": {
           "minimum": 0,
           "type": "integer"
          },
          "highestTierName": {
           "maxLength": 253,
           "type": "string"
          },
          "mode": {
           "default": "hard",
           "enum": [
            "hard",
            "soft"
           ],
           "type": "string"
          }
         },
         "type": "object"
        },
        "subGroupSize": {
         "default": 1,
         "format": "int32",
         "minimum": 1,
         "type": "integer"
        }
       },
       "type": "object"
      },
      "type": "array"
     }
    },
    "type": "object"
   },
   "status": {
    "properties": {
     "conditions": {
      "items": {
       "properties": {
        "lastTransitionTime": {
         "format": "date-time",
         "type": "string"
        },
        "message": {
         "type": "string"
        },
        "reason": {
         "type": "string"
        },
        "status": {
         "type": "string"
        },
        "transitionID": {
         "type": "string"
        },
        "type": {
         "type": "string"
        }
       },
       "type": "object"
      },
      "type": "array"
     },
     "failed": {
      "format": "int32",
      "minimum": 0,
      "type": "integer"
     },
     "phase": {
      "enum": [
       "Pending",
       "Running",
       "Unknown",
       "Inqueue",
       "Completed"
      ],
      "type": "string"
     },
     "running": {
      "format": "int32",
      "minimum": 0,
      "type": "integer"
     },
     "succeeded": {
      "format": "int32",
      "minimum": 0,
      "type": "integer"
     }
    },
    "type": "object"
   }
  },
  "type": "object"
 }
}
""")
