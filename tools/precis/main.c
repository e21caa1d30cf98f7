#include <stdio.h>

#include "precis/precis.h"

int main(void) {
    printf("precis %s\n", precis_version());
    return 0;
}
